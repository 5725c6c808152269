job "train" {
  datacenters = ["dc1"]
  type = "batch"
  group "gpu" {
    task "trainer" {
      driver = "docker"
      config {
        image    = "pytorch/pytorch:latest"
        command  = "torchrun"
        args     = ["--nproc_per_node=2", "train.py"]
        shm_size = 2147483648
      }
      resources {
        memory = 16384
        device "nvidia/gpu" {
          count = 2
        }
      }
    }
    task "side" {
      driver = "exec"
      config { command = "/bin/true" }
    }
  }
}
