export { grantAddons } from "./Addons.ts"
export { bundleStream, scanFolder } from "./Bundle.ts"
export { gitHeaders } from "./Git.ts"
export { withProgress } from "./Progress.ts"
