"""Abacus collector: the Python side of `abacus profile` and `abacus calibrate`.

A package: its modules import each other as `collector.zoo`, `collector.machine`, ... from the repository
root. `abacus profile` and `abacus calibrate` start collector/worker.py with PYTHONPATH set to that root;
by hand, run it as a module from the root:

    /usr/bin/python3 -m collector.worker --list       # the zoo
    /usr/bin/python3 -m collector.worker --list --generated 1000   # ... and 1,000 generated networks
    /usr/bin/python3 -m collector.worker --machine --threads 1

Modules: worker (the measurement loop), zoo (the networks, valid sizes in valid_sizes.json), generator
(networks sampled from a seed, `gen_cnn_s000123`, which zoo.get resolves; docs/GENERATOR.md), export_onnx
(the graphs Abacus reads), machine (machine identity), machine_profile (the microbenchmarks of a machine
profile), spread (the noise floor of repeated rows); tracker.c is the allocator tracker preloaded into
workers. TensorFlow (runtime tf-2.21.0, run with .runtimes/tf-2.21.0/bin/python): tf_worker (its measurement
loop, the same protocol, importing worker's helpers), tf_zoo (the Keras zoo), tf_export (its graphs).
"""
