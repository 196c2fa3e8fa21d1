# (empty: filled in as the gateway lands)
