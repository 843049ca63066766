"""Alto: a conversation agent with an honest memory and guarded hands."""
