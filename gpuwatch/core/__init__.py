"""Plain data shared by every layer: snapshots, units, and the bounded history."""
