"""What runs in the process that hosts moto for the local runtime."""
