"""The bottom layer: errors, settings, private files, relevance levels and the similarity scale.

Imports nothing of the project; every other package may import it (ARCHITECTURE.md).
"""
