# Shell helpers for dke.sh (sourced after lib.sh).
