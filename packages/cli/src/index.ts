export { cli, commands, run, version } from "./Cli.ts"
export { CliFailure } from "./Output.ts"
export { root, session, resolveOrg, resolveProject, sharedFlags } from "./Root.ts"
export { CliEnv, defaultUrl } from "./Settings.ts"
