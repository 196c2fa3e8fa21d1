# Benchmarks: never part of `make check`.
