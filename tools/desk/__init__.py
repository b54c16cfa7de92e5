"""The decision desk's domain: analyst memory, the decision log, the number audit, the market snapshot, news
sentiment."""
