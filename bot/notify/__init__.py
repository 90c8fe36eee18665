"""Getting word out: the outbox, the poll-and-alert cycle, scheduled jobs."""
