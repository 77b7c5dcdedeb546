"""A training run assembled: the workload, the layout, synchronous and EASGD iterations, the predicted curve and its notes."""
