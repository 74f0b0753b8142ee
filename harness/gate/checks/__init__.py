"""The gate's checks, a family to a module: the source's rules, the suites' rules and safety, output comparison,
guard bands, and the T0 draw's distribution. Pure functions where they can be; the pipeline runs them."""
