"""Who is who: the roles (traders, admins, per account or global) and which console login acts as which identity,
stored in the database and changed only by admins, each change an entry of the global audit chain."""
