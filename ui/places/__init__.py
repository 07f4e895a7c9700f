"""The Places page: the planner's questions about places (inflow, destinations, distance,
direction, A → B, every zone compared), true vs each release with its 95 % interval."""
