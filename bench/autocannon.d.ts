// autocannon ships no types; bench/me.ts declares the small part it uses.
declare module "autocannon"
