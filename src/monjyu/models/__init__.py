"""Model files shipped with MONJYU (weights trained in this repository)."""
