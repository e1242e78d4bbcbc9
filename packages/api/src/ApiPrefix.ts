/** Every group is served under this prefix, by an API of this id (a module of its own: a client of a few groups imports it without the whole API). */
export const apiId = "hostplane"
export const apiPrefix = "/v1"
