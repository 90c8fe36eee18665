"""The monthly kill-or-keep review and the weekly owner sign-off."""
