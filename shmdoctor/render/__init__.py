"""Renderers: a Report (or several) in, text out. No judgement here."""
