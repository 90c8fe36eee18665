"""The registry: teams, models, owners, budgets and rules, from YAML to the database."""
