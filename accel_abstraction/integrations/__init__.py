"""Glue between the selected backend and the trainers people use (Hugging Face, Lightning).

Vendor-free: each module here works for whatever backend accel selected. Importing this
package does nothing; see :mod:`.huggingface` and :mod:`.lightning` (docs/integrations.md).
"""
