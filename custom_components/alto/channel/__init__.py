"""The marker channel: splits the model's raw output into speech, action spans and thought."""
