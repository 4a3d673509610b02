"""Registered problems. Importing this package registers every problem (explicit list, nothing swallowed)."""
