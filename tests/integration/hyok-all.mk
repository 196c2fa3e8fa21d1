# Six clouds, one gateway: one holdfastd from one config serving XKS, EKM, CSE, OCI, SAP and DKE
# over one key store (README.md, "Six clouds, one gateway"); skipped while a plugin is not built.
TESTS += tests/integration/hyok-all.sh
EXTRA_DIST += tests/integration/hyok-all.sh tests/integration/hyok-all.py
