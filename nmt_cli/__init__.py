"""The `nmt` command (`nmt_cli.main`), on top of every other package of the project.

It imports the model library (`nmt`), the wire API (`nmt_api`), `serving`,
`batch` and `training`; none of them imports it.
"""
