"""Backends consume the tile IR. Each lives in its own folder."""
