"""Pieces the live window and the session replay share: palettes, time plots and axes."""
