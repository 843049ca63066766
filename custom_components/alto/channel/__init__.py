"""The reply channels: what a turn admits, and the reply split into speech, actions and thought.

`admission` checks an utterance before anything sees it; `json_channel` (the JSON answer) and
`markers` (the marks) split the streamed reply into speech, action spans and discarded thought;
`speech_gate` stands between the speech and the listener.
"""
