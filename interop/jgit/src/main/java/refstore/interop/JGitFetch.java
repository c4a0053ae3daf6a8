package refstore.interop;

import java.io.File;
import java.time.Instant;

import org.eclipse.jgit.api.CloneCommand;
import org.eclipse.jgit.api.Git;

/**
 * Clones through JGit's client, so that refstore's server is tested against a
 * fetch implementation other than git's. The protocol version is JGit's
 * {@code protocol.version}, read from the user's configuration as a JGit user
 * sets it.
 *
 * <pre>
 * clone URL DIR DEPTH [SINCE]   a clone of every branch, DEPTH commits deep
 *                               (0: not limited), and no commit older than
 *                               SINCE (seconds since the epoch) when given
 * </pre>
 */
public final class JGitFetch {
    private JGitFetch() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 4 || args.length > 5 || !args[0].equals("clone")) {
            System.err.println("usage: JGitFetch clone URL DIR DEPTH [SINCE]");
            System.exit(2);
        }
        CloneCommand clone = Git.cloneRepository()
                .setURI(args[1])
                .setDirectory(new File(args[2]))
                .setCloneAllBranches(true);
        int depth = Integer.parseInt(args[3]);
        if (depth > 0) {
            clone.setDepth(depth);
        }
        if (args.length == 5) {
            clone.setShallowSince(Instant.ofEpochSecond(Long.parseLong(args[4])));
        }
        clone.call().close();
    }
}
