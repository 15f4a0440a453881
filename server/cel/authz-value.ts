/** What the authorization library's values (authz.ts) have in common: their calls are priced apart (cost-rules.ts). */
export abstract class AuthzValue {}
