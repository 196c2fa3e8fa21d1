# Workspace CSE: the request body parser of every op, on arbitrary bytes. Included from
# gateway/plugins/gws-cse/local.mk.
