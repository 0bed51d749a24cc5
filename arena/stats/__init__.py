"""Statistics: Bradley-Terry, bootstrap, style control, ensembles, style features."""
