"""Alto in a real Home Assistant process, driven over REST."""
