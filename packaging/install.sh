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
#   packaging/install.sh --uninstall              removes all of it (and the start-at-login
#                                                 entry); sessions, settings and logs stay
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
sizes=(16 22 24 32 48 64 128 256 512)

usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; }
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

refresh_caches() {
  command -v update-desktop-database >/dev/null \
    && update-desktop-database -q "$data/applications" 2>/dev/null || true
  if command -v gtk-update-icon-cache >/dev/null && [ -d "$icons" ]; then
    gtk-update-icon-cache -q -t -f "$icons" 2>/dev/null || true
  fi
  touch "$icons" 2>/dev/null || true      # icon themes re-read a folder that changed
}

if [ "$mode" = uninstall ]; then
  rm -f "$desktop" "$metainfo" "$bash_completion" "$zsh_completion" "$fish_completion" \
        "$autostart" "$icons/scalable/apps/gpuwatch.svg"
  for size in "${sizes[@]}"; do rm -f "$icons/${size}x${size}/apps/gpuwatch.png"; done
  if [ -L "$bin_link" ] && [ "$(readlink "$bin_link")" = "$app_dir/gpuwatch" ]; then
    rm -f "$bin_link"
  fi
  rm -rf "$app_dir"
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
  [ -x "$bundle/gpuwatch" ] || fail "$bundle is not a gpuwatch bundle (no $bundle/gpuwatch; build one with packaging/build.sh)"
  bundle="$(cd "$bundle" && pwd)"
  if [ "$bundle" != "$app_dir" ]; then
    rm -rf "$app_dir.new"
    mkdir -p "$(dirname "$app_dir")"
    cp -a "$bundle" "$app_dir.new"
    rm -rf "$app_dir"
    mv "$app_dir.new" "$app_dir"
  fi
  exec_path="$app_dir/gpuwatch"
  mkdir -p "$(dirname "$bin_link")"
  if [ -e "$bin_link" ] && [ ! -L "$bin_link" ]; then
    echo "install.sh: $bin_link exists and is not a link; left as it is" >&2
  else
    ln -sfn "$exec_path" "$bin_link"
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
  [ -x "$exec_path" ] || fail "$exec_path is not an executable program"
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
case "$exec_path" in *[\"\'\\\`\$%]*)
  fail "$exec_path: a path with quotes, backslashes, \$, \` or % cannot go in a desktop entry" ;;
esac
quoted="$exec_path"
case "$exec_path" in *[[:space:]\<\>\~\|\&\;\*\?\#\(\)]*) quoted="\"$exec_path\"" ;; esac
mkdir -p "$(dirname "$desktop")" "$(dirname "$metainfo")"
while IFS= read -r line; do
  case "$line" in
    Exec=gpuwatch*) printf 'Exec=%s%s\n' "$quoted" "${line#Exec=gpuwatch}" ;;
    TryExec=*) printf 'TryExec=%s\n' "$exec_path" ;;
    *) printf '%s\n' "$line" ;;
  esac
done < "$share_desktop" > "$desktop.tmp"
mv "$desktop.tmp" "$desktop"
cp "$share_metainfo" "$metainfo"
for size in "${sizes[@]}"; do
  install -D -m 644 "$share_icons/${size}x${size}/apps/gpuwatch.png" "$icons/${size}x${size}/apps/gpuwatch.png"
done
install -D -m 644 "$share_icons/scalable/apps/gpuwatch.svg" "$icons/scalable/apps/gpuwatch.svg"
if [ -n "$completions" ]; then
  install -D -m 644 "$completions/gpuwatch.bash" "$bash_completion"
  install -D -m 644 "$completions/_gpuwatch" "$zsh_completion"
  install -D -m 644 "$completions/gpuwatch.fish" "$fish_completion"
fi
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
