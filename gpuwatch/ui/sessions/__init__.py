"""Recorded sessions in the window: recording, the session browser, replay and export."""
