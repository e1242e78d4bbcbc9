import { projectPath } from "../deploys.tsx"
import { Link } from "../router.tsx"
import { Empty } from "../ui.tsx"

export default function Logs({ params }: { readonly params: Record<string, string> }) {
  const org = params["org"]!
  const project = params["project"]!
  return (
    <>
      <h1>Logs</h1>
      <Empty>
        <p>
          There is no runtime output for {project}: this server's node serves the deployed files and does not run worker
          code yet, so nothing writes logs.
        </p>
        <p>
          What changed and when is on the <Link href={`${projectPath(org, project)}/deployments`}>deployments</Link>{" "}
          page.
        </p>
      </Empty>
    </>
  )
}
