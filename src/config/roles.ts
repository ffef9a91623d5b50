/**
 * The roles Roster itself relies on. ROLES may add others, but must keep these two: the seed users hold
 * both, a user written without a role gets the default one, and only the admin role may write. They
 * live on the floor (config/), not in users/, because the configuration needs them too (ROLES' default
 * and its check, a credential's default role) and imports nothing above itself.
 */

/** The privileged role: writes (POST, PUT, PATCH, DELETE) need it when AUTH is on. */
export const ADMIN_ROLE = 'admin';

/** The role of a user written without one, and of a credential that names none (least privilege). */
export const DEFAULT_ROLE = 'user';

/** The roles ROLES must include. */
export const REQUIRED_ROLES: readonly string[] = [ADMIN_ROLE, DEFAULT_ROLE];
