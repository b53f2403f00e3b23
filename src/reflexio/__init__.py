"""Reflexio: a learning layer for AI agents."""
