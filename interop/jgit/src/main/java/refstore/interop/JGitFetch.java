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
 * clone URL DIR [OPTION...]   a clone of every branch, with the options:
 *   --depth N                   N commits deep
 *   --since TIME                no commit older than TIME (seconds since the epoch)
 *   --exclude REF               none of the history of REF on the server
 * </pre>
 */
public final class JGitFetch {
    private JGitFetch() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 3 || args.length % 2 == 0 || !args[0].equals("clone")) {
            usage();
        }
        CloneCommand clone = Git.cloneRepository()
                .setURI(args[1])
                .setDirectory(new File(args[2]))
                .setCloneAllBranches(true);
        for (int i = 3; i < args.length; i += 2) {
            String value = args[i + 1];
            switch (args[i]) {
                case "--depth" -> clone.setDepth(Integer.parseInt(value));
                case "--since" -> clone.setShallowSince(Instant.ofEpochSecond(Long.parseLong(value)));
                case "--exclude" -> clone.addShallowExclude(value);
                default -> usage();
            }
        }
        clone.call().close();
    }

    private static void usage() {
        System.err.println("usage: JGitFetch clone URL DIR [--depth N] [--since TIME] [--exclude REF]");
        System.exit(2);
    }
}
