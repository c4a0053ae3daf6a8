package refstore.interop;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.io.FileInputStream;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.PublicKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Map;
import java.util.List;
import java.util.TreeSet;

import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

import org.eclipse.jgit.api.CloneCommand;
import org.eclipse.jgit.api.FetchCommand;
import org.eclipse.jgit.api.Git;
import org.eclipse.jgit.api.PushCommand;
import org.eclipse.jgit.internal.storage.dfs.DfsRepositoryDescription;
import org.eclipse.jgit.internal.storage.dfs.InMemoryRepository;
import org.eclipse.jgit.lib.Ref;
import org.eclipse.jgit.transport.CredentialsProvider;
import org.eclipse.jgit.transport.FetchConnection;
import org.eclipse.jgit.transport.PushResult;
import org.eclipse.jgit.transport.RefSpec;
import org.eclipse.jgit.transport.RemoteRefUpdate;
import org.eclipse.jgit.transport.SshSessionFactory;
import org.eclipse.jgit.transport.Transport;
import org.eclipse.jgit.transport.URIish;
import org.eclipse.jgit.transport.UsernamePasswordCredentialsProvider;
import org.eclipse.jgit.transport.sshd.ServerKeyDatabase;
import org.eclipse.jgit.transport.sshd.SshdSessionFactory;
import org.eclipse.jgit.transport.sshd.SshdSessionFactoryBuilder;

/**
 * The interop driver for JGit's client, with the command line of
 * {@code interop/clients/driver_args.py}:
 *
 * <pre>
 * clone URL DIR [--depth N]
 * fetch DIR [--depth N | --unshallow]
 * push DIR [--atomic] [--option O]... REFSPEC...     "ok REF" / "ng REF REASON" lines
 * ls-remote URL [--protocol 0|2]                     "OID NAME" lines, peeled as NAME^{}
 * </pre>
 *
 * Credentials come from INTEROP_USER and INTEROP_PASSWORD (HTTP),
 * INTEROP_SSH_KEY (SSH) and INTEROP_CA (a PEM certificate to trust). Exit 0:
 * done; 1: refused or failed; 2: a bad command line. {@code JGitClient
 * session} runs many commands in one JVM (see {@link #session}).
 */
public final class JGitClient {
    private JGitClient() {}

    private static final class Args {
        final List<String> positional = new ArrayList<>();
        final List<String> options = new ArrayList<>();
        int depth;
        Integer protocol;
        boolean unshallow;
        boolean atomic;
    }

    /** The environment of the command being run: the process's, or a session line's. */
    private static Map<String, String> environment = System.getenv();

    private static String env(String name) {
        return environment.get(name);
    }

    public static void main(String[] argv) throws Exception {
        if (argv.length == 1 && argv[0].equals("session")) {
            session();
            return;
        }
        System.exit(command(argv));
    }

    /** Runs one command line; its exit code. */
    private static int command(String[] argv) {
        try {
            if (argv.length < 1) {
                throw new IllegalArgumentException("no command");
            }
            Args a = parse(argv);
            trustCertificate();
            useSshKey();
            return run(argv[0], a);
        } catch (IllegalArgumentException e) {
            System.err.println("usage: JGitClient clone|fetch|push|ls-remote ... (see interop/clients/driver_args.py): "
                    + e.getMessage());
            return 2;
        } catch (Exception e) {
            System.err.println(e);
            for (Throwable cause = e.getCause(); cause != null; cause = cause.getCause()) {
                System.err.println("caused by: " + cause);
            }
            return 1;
        }
    }

    /**
     * Many commands in one JVM, so that a suite pays JGit's start-up once:
     * each line of stdin is one command, its words separated by tabs, the
     * first ones NAME=VALUE settings of INTEROP_* variables for it. Each
     * answer is "exit N", "out LEN" and LEN bytes, "err LEN" and LEN bytes.
     */
    private static void session() throws Exception {
        PrintStream realOut = System.out;
        PrintStream realErr = System.err;
        BufferedReader lines = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line = lines.readLine(); line != null; line = lines.readLine()) {
            Map<String, String> settings = new HashMap<>(System.getenv());
            List<String> words = new ArrayList<>(List.of(line.split("\t", -1)));
            while (!words.isEmpty() && words.get(0).startsWith("INTEROP_") && words.get(0).contains("=")) {
                String[] pair = words.remove(0).split("=", 2);
                settings.put(pair[0], pair[1]);
            }
            environment = settings;
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            int code;
            try {
                code = command(words.toArray(new String[0]));
            } finally {
                System.out.flush();
                System.err.flush();
                System.setOut(realOut);
                System.setErr(realErr);
            }
            realOut.print("exit " + code + "\nout " + out.size() + "\n");
            realOut.write(out.toByteArray());
            realOut.print("err " + err.size() + "\n");
            realOut.write(err.toByteArray());
            realOut.flush();
        }
    }

    private static Args parse(String[] argv) {
        Args a = new Args();
        for (int i = 1; i < argv.length; i++) {
            switch (argv[i]) {
                case "--depth" -> a.depth = Integer.parseInt(value(argv, ++i));
                case "--protocol" -> a.protocol = Integer.parseInt(value(argv, ++i));
                case "--option" -> a.options.add(value(argv, ++i));
                case "--unshallow" -> a.unshallow = true;
                case "--atomic" -> a.atomic = true;
                default -> a.positional.add(argv[i]);
            }
        }
        return a;
    }

    private static String value(String[] argv, int i) {
        if (i >= argv.length) {
            throw new IllegalArgumentException(argv[i - 1] + " needs a value");
        }
        return argv[i];
    }

    private static int run(String command, Args a) throws Exception {
        CredentialsProvider credentials = credentials();
        switch (command) {
            case "clone" -> {
                CloneCommand clone = Git.cloneRepository()
                        .setURI(a.positional.get(0))
                        .setDirectory(new File(a.positional.get(1)))
                        .setCloneAllBranches(true)
                        .setCredentialsProvider(credentials);
                if (a.depth > 0) {
                    clone.setDepth(a.depth);
                }
                clone.call().close();
                return 0;
            }
            case "fetch" -> {
                try (Git git = Git.open(new File(a.positional.get(0)))) {
                    FetchCommand fetch = git.fetch()
                            .setRemote("origin")
                            .setRefSpecs(new RefSpec("+refs/heads/*:refs/remotes/origin/*"))
                            .setCredentialsProvider(credentials);
                    if (a.depth > 0) {
                        fetch.setDepth(a.depth);
                    }
                    if (a.unshallow) {
                        fetch.setUnshallow(true);
                    }
                    fetch.call();
                }
                return 0;
            }
            case "push" -> {
                return push(a, credentials);
            }
            case "ls-remote" -> {
                lsRemote(a, credentials);
                return 0;
            }
            default -> throw new IllegalArgumentException("no command " + command);
        }
    }

    private static int push(Args a, CredentialsProvider credentials) throws Exception {
        try (Git git = Git.open(new File(a.positional.get(0)))) {
            PushCommand push = git.push()
                    .setRemote("origin")
                    .setAtomic(a.atomic)
                    .setCredentialsProvider(credentials);
            List<RefSpec> specs = new ArrayList<>();
            for (String spec : a.positional.subList(1, a.positional.size())) {
                specs.add(new RefSpec(spec));
            }
            push.setRefSpecs(specs);
            if (!a.options.isEmpty()) {
                push.setPushOptions(a.options);
            }
            boolean refused = false;
            for (PushResult result : push.call()) {
                if (!result.getMessages().isEmpty()) {
                    System.err.println(result.getMessages());
                }
                for (RemoteRefUpdate update : result.getRemoteUpdates()) {
                    RemoteRefUpdate.Status status = update.getStatus();
                    if (status == RemoteRefUpdate.Status.OK || status == RemoteRefUpdate.Status.UP_TO_DATE) {
                        System.out.println("ok " + update.getRemoteName());
                    } else {
                        refused = true;
                        String message = update.getMessage() == null ? "" : " " + update.getMessage();
                        System.out.println("ng " + update.getRemoteName() + " " + status + message);
                    }
                }
            }
            return refused ? 1 : 0;
        }
    }

    /** The refs of a remote, through a repository that only holds the protocol version asked for. */
    private static void lsRemote(Args a, CredentialsProvider credentials) throws Exception {
        try (InMemoryRepository repo = new InMemoryRepository(new DfsRepositoryDescription("ls-remote"))) {
            if (a.protocol != null) {
                repo.getConfig().setInt("protocol", null, "version", a.protocol);
            }
            try (Transport transport = Transport.open(repo, new URIish(a.positional.get(0)))) {
                transport.setCredentialsProvider(credentials);
                try (FetchConnection connection = transport.openFetch()) {
                    TreeSet<String> lines = new TreeSet<>();
                    for (Ref ref : connection.getRefs()) {
                        if (ref.getObjectId() != null) {
                            lines.add(ref.getObjectId().name() + " " + ref.getName());
                        }
                        if (ref.getPeeledObjectId() != null) {
                            lines.add(ref.getPeeledObjectId().name() + " " + ref.getName() + "^{}");
                        }
                    }
                    lines.forEach(System.out::println);
                }
            }
        }
    }

    private static CredentialsProvider credentials() {
        String user = env("INTEROP_USER");
        if (user == null) {
            return null;
        }
        String password = env("INTEROP_PASSWORD");
        return new UsernamePasswordCredentialsProvider(user, password == null ? "" : password);
    }

    private static String trusted;

    /** Trusts INTEROP_CA, a PEM certificate, for HTTPS. */
    private static void trustCertificate() throws Exception {
        String ca = env("INTEROP_CA");
        if (ca == null || ca.equals(trusted)) {
            return;
        }
        trusted = ca;
        KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
        store.load(null, null);
        try (InputStream in = new FileInputStream(ca)) {
            int i = 0;
            for (Certificate cert : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                store.setCertificateEntry("ca" + i++, cert);
            }
        }
        TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        trust.init(store);
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, trust.getTrustManagers(), null);
        SSLContext.setDefault(context);
    }

    private static String sshKey;

    /**
     * SSH with the key INTEROP_SSH_KEY only, no configuration files, and any
     * host key (the test servers' keys are not known in advance).
     */
    private static void useSshKey() throws Exception {
        String key = env("INTEROP_SSH_KEY");
        if (key == null || key.equals(sshKey)) {
            return;
        }
        sshKey = key;
        if (SshSessionFactory.getInstance() instanceof SshdSessionFactory previous) {
            previous.close();
        }
        File sshDir = Files.createTempDirectory("jgit-ssh").toFile();
        sshDir.deleteOnExit();
        SshSessionFactory.setInstance(new SshdSessionFactoryBuilder()
                .setHomeDirectory(sshDir)
                .setSshDirectory(sshDir)
                .setPreferredAuthentications("publickey")
                .setDefaultIdentities(dir -> List.of(Path.of(key)))
                .setServerKeyDatabase((home, ssh) -> new ServerKeyDatabase() {
                    @Override
                    public List<PublicKey> lookup(String connectAddress, InetSocketAddress remoteAddress,
                            Configuration config) {
                        return List.of();
                    }

                    @Override
                    public boolean accept(String connectAddress, InetSocketAddress remoteAddress,
                            PublicKey serverKey, Configuration config, CredentialsProvider provider) {
                        return true;
                    }
                })
                .build(null));
    }
}
