"""Descriptions of machines and of how they are given: hardware, topology summary, runtimes, noise, profiles, TOML loading."""
