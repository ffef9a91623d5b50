/**
 * The roles Roster itself relies on. ROLES may add others, but must keep these two: the seed users hold
 * both, a user written without a role gets the default one, and only the admin role may write.
 */

/** The privileged role: writes (POST, PUT, PATCH, DELETE) need it when AUTH is on. */
export const ADMIN_ROLE = 'admin';

/** The role of a user written without one, and of a credential that names none (least privilege). */
export const DEFAULT_ROLE = 'user';

/** The roles ROLES must include. */
export const REQUIRED_ROLES: readonly string[] = [ADMIN_ROLE, DEFAULT_ROLE];
