#!/usr/bin/env bash
# Installs gpuwatch's desktop integration for the current user (no root needed):
# the launcher entry, the icon, the AppStream metainfo and the bash/zsh/fish completion,
# in the XDG places; with --bundle, the one-folder build itself too.
#
#   packaging/install.sh --bundle dist/gpuwatch   the bundle from packaging/build.sh:
#                                                 copied to ~/.local/lib/gpuwatch, linked
#                                                 as ~/.local/bin/gpuwatch
#   packaging/install.sh                          the `gpuwatch` on PATH (a pip install)
#   packaging/install.sh --exec /path/to/gpuwatch that one
#   packaging/install.sh --uninstall              removes what the install made (and the
#                                                 start-at-login entry); sessions, settings
#                                                 and logs stay
#
# What an install makes (files, the bundle, the link, every folder it had to create) is
# listed in $XDG_DATA_HOME/gpuwatch/install-manifest; --uninstall removes only what is
# listed there, and only while it is still what was made (a link still pointing where
# it did, a file still a file), then the folders it made once they are empty. A
# ~/.local/bin/gpuwatch or ~/.local/lib/gpuwatch that another installer (pipx, pip
# --user) or the user made is never replaced or removed.
#
# Where things go (XDG_DATA_HOME defaults to ~/.local/share, XDG_CONFIG_HOME to ~/.config):
#   $XDG_DATA_HOME/applications/gpuwatch.desktop
#   $XDG_DATA_HOME/icons/hicolor/{16x16..512x512,scalable}/apps/gpuwatch.{png,svg}
#   $XDG_DATA_HOME/metainfo/io.github.gpuwatch.gpuwatch.metainfo.xml
#   $XDG_DATA_HOME/bash-completion/completions/gpuwatch
#   $XDG_DATA_HOME/zsh/site-functions/_gpuwatch     (add that folder to zsh's fpath)
#   $XDG_CONFIG_HOME/fish/completions/gpuwatch.fish
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
data="${XDG_DATA_HOME:-$HOME/.local/share}"
config="${XDG_CONFIG_HOME:-$HOME/.config}"
app_dir="$HOME/.local/lib/gpuwatch"
bin_link="$HOME/.local/bin/gpuwatch"
desktop="$data/applications/gpuwatch.desktop"
metainfo="$data/metainfo/io.github.gpuwatch.gpuwatch.metainfo.xml"
icons="$data/icons/hicolor"
bash_completion="$data/bash-completion/completions/gpuwatch"
zsh_completion="$data/zsh/site-functions/_gpuwatch"
fish_completion="$config/fish/completions/gpuwatch.fish"
autostart="$config/autostart/gpuwatch.desktop"
manifest="$data/gpuwatch/install-manifest"
sizes=(16 22 24 32 48 64 128 256 512)

usage() { sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; }
fail() { echo "install.sh: $*" >&2; exit 2; }

mode=install bundle="" exec_path=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bundle) [ $# -ge 2 ] || fail "--bundle needs the bundle's folder (dist/gpuwatch)"
              bundle="$2"; shift 2 ;;
    --exec) [ $# -ge 2 ] || fail "--exec needs the path of the gpuwatch program"
            exec_path="$2"; shift 2 ;;
    --uninstall) mode=uninstall; shift ;;
    -h|--help) usage; exit 0 ;;
    *) fail "unknown argument '$1' (see --help)" ;;
  esac
done

refresh_caches() {    # only in folders that exist: a removed one is not made again
  if command -v update-desktop-database >/dev/null && [ -d "$data/applications" ]; then
    update-desktop-database -q "$data/applications" 2>/dev/null || true
  fi
  if command -v gtk-update-icon-cache >/dev/null && [ -d "$icons" ]; then
    gtk-update-icon-cache -q -t -f "$icons" 2>/dev/null || true
  fi
  [ -d "$icons" ] && touch "$icons" 2>/dev/null || true   # icon themes re-read a changed folder
}

# --- the manifest: one entry a line, fields split by a tab ----------------------------
#   file PATH | link PATH TARGET | bundle PATH | dir PATH (a folder the install created)
entries=()
note() { entries+=("$(printf '%s\t' "$@")"); }
# Create a folder (and its missing parents), noting each one this run creates.
make_dir() {
  local dir="$1" missing=()
  while [ ! -e "$dir" ] && [ ! -L "$dir" ]; do
    missing+=("$dir"); dir="$(dirname "$dir")"
  done
  mkdir -p "$1"
  local i
  for (( i=${#missing[@]}-1; i>=0; i-- )); do note dir "${missing[$i]}"; done
}
listed() {      # listed KIND PATH: the manifest has that entry
  # one awk, no pipe: under pipefail, `cut | grep -q` fails when grep stops reading early
  # (the path through ENVIRON: awk -v would read its backslashes as escapes)
  [ -f "$manifest" ] && K="$1" P="$2" awk -F'\t' \
    '$1 == ENVIRON["K"] && $2 == ENVIRON["P"] { found = 1; exit } END { exit !found }' "$manifest"
}
link_target() {  # the target the manifest noted for a link
  [ -f "$manifest" ] && P="$2" awk -F'\t' '$1 == "link" && $2 == ENVIRON["P"] { t = $3 } END { print t }' "$manifest"
}

if [ "$mode" = uninstall ]; then
  # the start-at-login entry is gpuwatch's own (the window writes it), not the installer's
  [ -f "$autostart" ] && [ ! -L "$autostart" ] && rm -f "$autostart"
  if [ ! -f "$manifest" ]; then
    echo "install.sh: no install manifest ($manifest): nothing of an install is known, so nothing was removed" >&2
    echo "  (an install by an older install.sh: remove its files by hand, or install again and uninstall)" >&2
    exit 1
  fi
  made_dirs=()
  while IFS=$'\t' read -r kind path target _; do
    case "$kind" in
      file) [ -f "$path" ] && [ ! -L "$path" ] && rm -f "$path" ;;
      link) [ -L "$path" ] && [ "$(readlink "$path")" = "$target" ] && rm -f "$path" ;;
      bundle) [ -d "$path" ] && [ ! -L "$path" ] && [ -f "$path/.gpuwatch-bundle" ] && rm -rf "$path" ;;
      dir) made_dirs+=("$path") ;;
    esac
  done < "$manifest"
  rm -f "$manifest"
  # caches the desktop tools wrote into folders this install made go with them
  for dir in "${made_dirs[@]}"; do
    case "$dir" in
      "$data/applications") rm -f "$dir/mimeinfo.cache" ;;
      "$icons") rm -f "$dir/icon-theme.cache" ;;
    esac
  done
  # the folders it made, deepest first, each only once empty (sessions keep theirs)
  printf '%s\n' "${made_dirs[@]}" | awk '{ print length($0) "\t" $0 }' | sort -rn | cut -f2- |
    while IFS= read -r dir; do
      [ -n "$dir" ] && [ -d "$dir" ] && [ ! -L "$dir" ] && rmdir "$dir" 2>/dev/null || true
    done
  refresh_caches
  echo "gpuwatch's desktop entry, icon, metainfo, completions and start-at-login entry are removed."
  echo "Sessions, settings and logs are kept (Help → About in the window lists where)."
  exit 0
fi

[ -z "$bundle" ] || [ -z "$exec_path" ] || fail "give --bundle or --exec, not both"
completions=""
share_desktop="$here/gpuwatch.desktop"
share_metainfo="$here/io.github.gpuwatch.gpuwatch.metainfo.xml"
share_icons="$root/resources/icons/hicolor"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

if [ -n "$bundle" ]; then
  [ -f "$bundle/gpuwatch" ] && [ -x "$bundle/gpuwatch" ] || fail "$bundle is not a gpuwatch bundle (no $bundle/gpuwatch; build one with packaging/build.sh)"
  bundle="$(cd "$bundle" && pwd)"
  if [ -e "$app_dir" ] || [ -L "$app_dir" ]; then
    listed bundle "$app_dir" && [ -f "$app_dir/.gpuwatch-bundle" ] && [ ! -L "$app_dir" ] ||
      fail "$app_dir exists and was not made by this installer; move it away first (nothing was changed)"
  fi
  if [ "$bundle" != "$app_dir" ]; then
    make_dir "$(dirname "$app_dir")"
    staged="$(mktemp -d "$app_dir.new.XXXXXX")"
    cp -a "$bundle/." "$staged/"
    touch "$staged/.gpuwatch-bundle"
    if [ -d "$app_dir" ]; then
      old="$(mktemp -d "$app_dir.old.XXXXXX")"; rmdir "$old"
      mv "$app_dir" "$old" && mv "$staged" "$app_dir" && rm -rf "$old"
    else
      mv "$staged" "$app_dir"
    fi
  fi
  note bundle "$app_dir"
  exec_path="$app_dir/gpuwatch"
  make_dir "$(dirname "$bin_link")"
  if [ -L "$bin_link" ] && [ "$(readlink "$bin_link")" = "$exec_path" ]; then
    note link "$bin_link" "$exec_path"          # ours already
  elif [ -e "$bin_link" ] || [ -L "$bin_link" ]; then
    if [ -L "$bin_link" ] && [ "$(link_target link "$bin_link")" = "$(readlink "$bin_link")" ]; then
      ln -sfn "$exec_path" "$bin_link"; note link "$bin_link" "$exec_path"
    else
      echo "install.sh: $bin_link was not made by this installer (another gpuwatch?); left as it is" >&2
    fi
  else
    ln -s "$exec_path" "$bin_link"; note link "$bin_link" "$exec_path"
  fi
  completions="$app_dir/completions"
  [ -f "$app_dir/share/gpuwatch.desktop" ] && share_desktop="$app_dir/share/gpuwatch.desktop"
  [ -f "$app_dir/share/${share_metainfo##*/}" ] && share_metainfo="$app_dir/share/${share_metainfo##*/}"
  [ -d "$app_dir/share/hicolor" ] && share_icons="$app_dir/share/hicolor"
else
  if [ -z "$exec_path" ]; then
    exec_path="$(command -v gpuwatch || true)"
    [ -n "$exec_path" ] || fail "no gpuwatch on PATH: give --exec /path/to/gpuwatch or --bundle dist/gpuwatch"
  fi
  [ -f "$exec_path" ] && [ -x "$exec_path" ] || fail "$exec_path is not an executable program (a regular file with execute permission)"
  exec_path="$(cd "$(dirname "$exec_path")" && pwd)/$(basename "$exec_path")"
  python="$(dirname "$exec_path")/python"
  [ -x "$python" ] || python=python3
  if "$python" -m gpuwatch.commands.completion --all "$tmp/completions" >/dev/null; then
    completions="$tmp/completions"
  else
    echo "install.sh: could not generate the shell completions with $python; skipped" >&2
  fi
fi

# The desktop entry runs this very program (a desktop session's PATH may lack ~/.local/bin);
# a path with spaces is quoted as the Desktop Entry spec asks.
case "$exec_path" in *[\"\'\\\`\$%]*|*[[:cntrl:]]*)
  fail "$exec_path: a path with quotes, backslashes, \$, \`, % or control characters (a line break, a tab) cannot go in a desktop entry" ;;
esac
quoted="$exec_path"
case "$exec_path" in *[[:space:]\<\>\~\|\&\;\*\?\#\(\)]*) quoted="\"$exec_path\"" ;; esac
# every file goes through put (which notes it, and the folders it makes)
put() {        # put SOURCE TARGET: a copy, mode 644
  make_dir "$(dirname "$2")"
  install -m 644 "$1" "$2.tmp.$$" && mv -f "$2.tmp.$$" "$2"
  note file "$2"
}
make_dir "$(dirname "$desktop")"
while IFS= read -r line; do
  case "$line" in
    Exec=gpuwatch*) printf 'Exec=%s%s\n' "$quoted" "${line#Exec=gpuwatch}" ;;
    TryExec=*) printf 'TryExec=%s\n' "$exec_path" ;;
    *) printf '%s\n' "$line" ;;
  esac
done < "$share_desktop" > "$tmp/gpuwatch.desktop"
put "$tmp/gpuwatch.desktop" "$desktop"
put "$share_metainfo" "$metainfo"
for size in "${sizes[@]}"; do
  put "$share_icons/${size}x${size}/apps/gpuwatch.png" "$icons/${size}x${size}/apps/gpuwatch.png"
done
put "$share_icons/scalable/apps/gpuwatch.svg" "$icons/scalable/apps/gpuwatch.svg"
if [ -n "$completions" ]; then
  put "$completions/gpuwatch.bash" "$bash_completion"
  put "$completions/_gpuwatch" "$zsh_completion"
  put "$completions/gpuwatch.fish" "$fish_completion"
fi
# the manifest: what an earlier install made (uninstall checks each entry still holds)
# and what this run made
make_dir "$(dirname "$manifest")"
{
  [ -f "$manifest" ] && cat "$manifest"
  printf '%s\n' "${entries[@]}" | sed 's/\t$//'
} | awk 'NF && !seen[$0]++' > "$tmp/manifest"
mv -f "$tmp/manifest" "$manifest"
# A start-at-login entry made by an earlier install runs the new program from now on.
if [ -f "$autostart" ]; then
  while IFS= read -r line; do
    case "$line" in
      Exec=*" gui --tray") printf 'Exec=%s gui --tray\n' "$quoted" ;;
      *) printf '%s\n' "$line" ;;
    esac
  done < "$autostart" > "$autostart.tmp"
  mv "$autostart.tmp" "$autostart"
fi
refresh_caches

echo "gpuwatch is installed for ${USER:-$(id -un)}: 'gpuwatch' in the applications menu runs $exec_path"
echo "  desktop entry  $desktop"
echo "  icon           $icons/{16x16..512x512,scalable}/apps/"
echo "  metainfo       $metainfo"
if [ -n "$completions" ]; then
  echo "  completions    $bash_completion, $fish_completion,"
  echo "                 $zsh_completion (zsh: fpath+=(${zsh_completion%/*}) before compinit)"
fi
