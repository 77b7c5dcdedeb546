"""What communication costs: the algorithm registry and `auto` policy, closed forms, plans, link loads, pricing and the critical path."""
