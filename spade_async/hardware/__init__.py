"""What the machine has and where models go: the GPU probe (without initialising CUDA), the
placement of engine and learner, the device/dtype rule, and returning freed memory."""
