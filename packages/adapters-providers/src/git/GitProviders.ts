import { Layer } from "effect"
import { areaProviders } from "../Area.ts"
import * as GitStorageDisk from "./GitStorageDisk.ts"
import * as SshKeyParserSsh2 from "./SshKeyParserSsh2.ts"

/** Bare repositories under `<data dir>/git` (or SERVICE_GIT_DIR), driven by the git binary; SSH keys read by ssh2. */
export const GitProviders = areaProviders({
  name: "git",
  fromEnv: Layer.merge(GitStorageDisk.layerConfig, SshKeyParserSsh2.layer)
})
