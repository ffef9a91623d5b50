/** Where the versioned API lives on the REST port (contract). */
export const API_PREFIX = '/api/v1';
