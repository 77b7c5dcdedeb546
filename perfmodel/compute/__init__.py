"""What one device's compute costs: roofline, efficiency, memory, measured inputs and traces."""
