"""The gate (`python gate.py`): is a candidate right everywhere? Its command, its workers, the pipeline they run
for each substrate, and the checks that pipeline is made of (`checks/`)."""
