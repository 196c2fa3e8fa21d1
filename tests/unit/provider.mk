# (empty: filled in as the provider lands)
