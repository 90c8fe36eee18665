"""Getting word out: the outbox, its delivery, leader election, scheduled jobs."""
