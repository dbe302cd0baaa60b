"""``accel parity``: the same training script on several backends, compared step by step.

* :mod:`.runner`: runs the script once per backend in a subprocess (only ``ACCEL_BACKEND``
  changed) and follows the metrics it logs with ``accel.log_metric``;
* :mod:`.compare`: per-step values against the first backend (bitwise flag, max abs/rel
  difference, first diverging step) and median step times;
* :mod:`.report`: the rich table and ``parity.json``; :mod:`.plot`: the loss curves as a PNG;
* :mod:`.cli`: the ``accel parity`` subcommand.
"""
