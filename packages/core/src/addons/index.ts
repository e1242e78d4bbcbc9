export * from "./Addon.ts"
export * from "./Addons.ts"
export * from "./AddonsArea.ts"
export * from "./AddonRules.ts"
