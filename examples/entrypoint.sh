#!/bin/sh
# A training image's entrypoint: judge /dev/shm against the loader, then exec the training command.
# A container too small for the loader stops here, exit 1, with the --shm-size to ask for, instead of
# dying in its first batch with "unable to allocate shared memory" or a bus error.
#   ENTRYPOINT ["/entrypoint.sh"]  CMD ["python", "train.py"]
set -e
shmdoctor check \
  --batch-size "${BATCH_SIZE:-100}" \
  --num-workers "${NUM_WORKERS:-4}" \
  --sample-bytes "${SAMPLE_BYTES:-1MiB}" \
  --ranks "${LOCAL_WORLD_SIZE:-1}"
exec "$@"
