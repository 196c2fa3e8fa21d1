# (empty: filled in as hf-load lands)
