# The sppark and blst commits the peer harness builds (sourced by prepare.sh
# and run.sh). Both are the newest commits of their repositories' default
# branches when the harness was written:
#   sppark 17278d7 "rust/Cargo.toml: bump the version number." (2026-06-04)
#   blst   dece82e "bindings/rust: resolve dependabot warning." (2026-04-17)
SPPARK_COMMIT=17278d74295392f9813f009300b257a688422b7a
BLST_COMMIT=dece82ea537b422890888bacde4034ca5b5a44d8
