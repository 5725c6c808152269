#!/bin/sh
# Two PyTorch trainers on the engine's default 64 MiB /dev/shm (default-shm, a warning): the first silenced by its
# --label shmdoctor.ignore, the second left as it is.
docker run --rm --gpus all --label shmdoctor.ignore=default-shm pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime python train.py
docker run --rm --gpus all pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime python train.py
